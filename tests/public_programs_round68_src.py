"""Sources of the round-68 public programs (tests/api/test_public_programs_round68.py and
tests/compile/test_public_patterns_round68.py), executed with ``torch`` bound to torch or
tracegrad by ``program(T, SRC)``. Kept as in their repositories apart from the ``import`` lines
(the names are given as globals) and the changes noted in place; see the test files for the
repositories, paths, commits and licenses."""
import public_programs_round67_src as _r67

module = _r67.module


def program(T, src, **extra):
    """Execute a program source with round 67's globals (``torch``, ``nn``, ``F``, ``optim``,
    ``np``, ``math``, ``copy``, ``time``, ``Variable``, ``DataLoader``, ...)."""
    return _r67.program(T, src, **extra)


# LoniQin/pytorch-style-transfer (no license file) at cb48fc3: utils.py, Normalization.py,
# ContentLoss.py and StyleLoss.py, in that order, but for their imports
STYLE_PARTS = r'''
def get_current_device():
    use_coda = torch.cuda.is_available()
    device = torch.device('cuda' if use_coda else 'cpu')
    return device

class Normalization(nn.Module):

    def __init__(self, mean, std):
        super(Normalization, self).__init__()
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std

class ContentLoss(nn.Module):

    def __init__(self, target):
        super(ContentLoss, self).__init__()
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input

class StyleLoss(nn.Module):
    def __init__(self, target):
        super(StyleLoss, self).__init__()
        self.target = self.gram_matrix(target).detach()

    def forward(self, input):
        G = self.gram_matrix(input=input)
        self.loss = F.mse_loss(G, self.target)
        return input

    def gram_matrix(self, input):
        a, b, c, d = input.size()
        features = input.view(a * b, c * d)
        G = torch.mm(features, features.t())
        return G.div(a * b * c * d)
'''

# LoniQin/pytorch-style-transfer StyleTransfer.py at d5ab795, but for its imports and its
# ``__main__`` block (``transforms``, ``models``, ``plt``, ``ImageLoader`` and ``copy`` are
# globals the tests give: torchvision, matplotlib and PIL are not installed, and the images are
# tensors the tests make)
STYLE_TRANSFER = r'''
class StyleTransfer(object):
    def __init__(self,
                 size,
                 style_path,
                 content_path,
                 save_path = None,
                 device = None,
                 content_layers = ['conv_4'],
                 style_layers = ['conv_1', 'conv_2', 'conv_3', 'conv_4', 'conv_5'],
                 step_count = 300,
                 style_weight = 1000000,
                 content_weight = 1,
                 transform_model = None):
        self.device = device
        if self.device == None:
            self.device = get_current_device()
        self.size = size
        self.style_path = style_path
        self.content_path = content_path
        self.loader = transforms.Compose([
            transforms.Resize(self.size),
            transforms.ToTensor()
        ])
        self.content_layers = content_layers
        self.style_layers = style_layers
        self.step_count = step_count
        self.style_weight = style_weight
        self.content_weight = content_weight
        self.save_path = save_path
        self.step = 0
        self.transform_model = transform_model
        if self.transform_model == None:
            self.transform_model = models.vgg19(pretrained = True).features.to(self.device).eval()

    def load_image(self):
        self.style_image = ImageLoader(file_path = self.style_path, loader = self.loader, device = self.device)
        self.content_image = ImageLoader(file_path = self.content_path, loader = self.loader, device = self.device)
        assert self.style_image.image.size() == self.content_image.image.size(), "Style image and content image should have the same size"
        self.input_image = self.content_image.image.clone()

    def show_image(self, tensor, title = None):
        unloader = transforms.ToPILImage()
        image = tensor.cpu().clone()
        print("Before squeeze:", image.size())
        image = image.squeeze(0)
        print("After squeeze:", image.size())
        image = unloader(image)
        print("After unload: ", image.size)
        #plt.imshow(image)
        if title is not None:
            plt.title(title)
        plt.pause(3)

    def show_images(self):
        plt.figure()

        self.show_image(tensor = self.style_image.image, title = "Style Image")
        plt.figure()
        self.show_image(tensor = self.content_image.image, title = "Content Image")
        plt.figure()
        self.show_image(self.input_image, "Input Image")
        plt.show()

    def run(self):

        torch.autograd.set_detect_anomaly(True)
        normalization = Normalization([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]).to(self.device)
        content_losses = []
        style_losses = []
        model = nn.Sequential(normalization)
        i = 0
        transform_model = copy.deepcopy(self.transform_model)
        for layer in transform_model.children():
            if isinstance(layer, nn.Conv2d):
                i += 1
                name = 'conv_{}'.format(i)
            elif isinstance(layer, nn.ReLU):
                name = 'relu_{}'.format(i)
                layer = nn.ReLU(inplace=False)
            elif isinstance(layer, nn.MaxPool2d):
                name = 'pool_{}'.format(i)
            elif isinstance(layer, nn.BatchNorm2d):
                name = 'bn_{}'.format(i)
            else:
                raise RuntimeError('Unrecognized layer: {}'.format(layer.__class__.name))
            model.add_module(name, layer)

            if name in self.content_layers:
                target = model(self.content_image.image).detach()
                content_loss = ContentLoss(target)
                model.add_module("content_loss_{}".format(i), content_loss)
                content_losses.append(content_loss)
            if name in self.style_layers:
                target = model(self.style_image.image).detach()
                style_loss = StyleLoss(target)
                model.add_module("style_loss_{}".format(i), style_loss)
                style_losses.append(style_loss)

        for i in range(len(model) - 1, -1, -1):
            if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
                break
        model = model[:(i+1)]

        optimizer = optim.LBFGS([self.input_image.requires_grad_()])
        print('Optimizing..')
        self.step = 0
        while self.step <= self.step_count:
            def closure():
                self.input_image.data.clamp_(0, 1)
                optimizer.zero_grad()
                model(self.input_image)
                style_score = 0
                content_score = 0
                for item in style_losses:
                    style_score += item.loss
                for item in content_losses:
                    content_score += item.loss
                style_score *= self.style_weight
                content_score *= self.content_weight
                loss = style_score + content_score
                loss.backward()
                self.step += 1
                #print("run {}".format(self.step))
                if self.step % 50 == 0:
                    print("Style loss: {:4f} Content loss: {:4f}".format(style_score.item(), content_score.item()))
                return content_score + content_score
            optimizer.step(closure)
        self.input_image.data.clamp_(0, 1)

        if self.save_path != None:
            unloader = transforms.ToPILImage()
            image = self.input_image.cpu().clone()
            image = image.squeeze(0)
            image = unloader(image)
            image.save(self.save_path)
            print("Image saved to ", self.save_path)
'''

# singh-hrituraj/PixelCNN-Pytorch (no license file) MaskedCNN.py and Model.py at 69daf9f, in
# that order, but for their imports (tab-indented as in the repository)
PIXELCNN = r'''
class MaskedCNN(nn.Conv2d):
	"""
	Implementation of Masked CNN Class as explained in A Oord et. al. 
	Taken from https://github.com/jzbontar/pixelcnn-pytorch
	"""

	def __init__(self, mask_type, *args, **kwargs):
		self.mask_type = mask_type
		assert mask_type in ['A', 'B'], "Unknown Mask Type"
		super(MaskedCNN, self).__init__(*args, **kwargs)
		self.register_buffer('mask', self.weight.data.clone())

		_, depth, height, width = self.weight.size()
		self.mask.fill_(1)
		if mask_type =='A':
			self.mask[:,:,height//2,width//2:] = 0
			self.mask[:,:,height//2+1:,:] = 0
		else:
			self.mask[:,:,height//2,width//2+1:] = 0
			self.mask[:,:,height//2+1:,:] = 0


	def forward(self, x):
		self.weight.data*=self.mask
		return super(MaskedCNN, self).forward(x)

class PixelCNN(nn.Module):
	"""
	Network of PixelCNN as described in A Oord et. al. 
	"""
	def __init__(self, no_layers=8, kernel = 7, channels=64, device=None):
		super(PixelCNN, self).__init__()
		self.no_layers = no_layers
		self.kernel = kernel
		self.channels = channels
		self.layers = {}
		self.device = device

		self.Conv2d_1 = MaskedCNN('A',1,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_1 = nn.BatchNorm2d(channels)
		self.ReLU_1= nn.ReLU(True)

		self.Conv2d_2 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_2 = nn.BatchNorm2d(channels)
		self.ReLU_2= nn.ReLU(True)

		self.Conv2d_3 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_3 = nn.BatchNorm2d(channels)
		self.ReLU_3= nn.ReLU(True)

		self.Conv2d_4 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_4 = nn.BatchNorm2d(channels)
		self.ReLU_4= nn.ReLU(True)

		self.Conv2d_5 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_5 = nn.BatchNorm2d(channels)
		self.ReLU_5= nn.ReLU(True)

		self.Conv2d_6 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_6 = nn.BatchNorm2d(channels)
		self.ReLU_6= nn.ReLU(True)

		self.Conv2d_7 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_7 = nn.BatchNorm2d(channels)
		self.ReLU_7= nn.ReLU(True)

		self.Conv2d_8 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_8 = nn.BatchNorm2d(channels)
		self.ReLU_8= nn.ReLU(True)

		self.out = nn.Conv2d(channels, 256, 1)

	def forward(self, x):
		x = self.Conv2d_1(x)
		x = self.BatchNorm2d_1(x)
		x = self.ReLU_1(x)

		x = self.Conv2d_2(x)
		x = self.BatchNorm2d_2(x)
		x = self.ReLU_2(x)

		x = self.Conv2d_3(x)
		x = self.BatchNorm2d_3(x)
		x = self.ReLU_3(x)

		x = self.Conv2d_4(x)
		x = self.BatchNorm2d_4(x)
		x = self.ReLU_4(x)

		x = self.Conv2d_5(x)
		x = self.BatchNorm2d_5(x)
		x = self.ReLU_5(x)

		x = self.Conv2d_6(x)
		x = self.BatchNorm2d_6(x)
		x = self.ReLU_6(x)

		x = self.Conv2d_7(x)
		x = self.BatchNorm2d_7(x)
		x = self.ReLU_7(x)

		x = self.Conv2d_8(x)
		x = self.BatchNorm2d_8(x)
		x = self.ReLU_8(x)

		return self.out(x)
'''

# singh-hrituraj/PixelCNN-Pytorch train.py at 70f82d4: ``main``, whole (``parse_config`` and
# ``get_MNIST``, its utils.py's, are stand-ins the tests give with ``data``, ``os`` and
# ``print``: tiny synthetic images, a loader without shuffling or workers, a collected log)
PIXELCNN_TRAIN = r'''
def main(config_file):
	config = parse_config(config_file)
	data_ = config['data']
	network = config['network']

	path = data_.get('path', '/home/gnpillai/Hrituraj/Pixel-CNN/Data')
	data_name = data_.get('data_name','MNIST')
	batch_size = data_.get('batch_size', 144)

	layers = network.get('no_layers', 8)
	kernel = network.get('kernel', 7)
	channels = network.get('channels', 64)
	epochs = network.get('epochs', 25)
	save_path = network.get('save_path', '/home/gnpillai/Hrituraj/Pixel-CNN/Models')


	#Loading Data
	if (data_name=='MNIST'):
		train, test = get_MNIST(path)

	train = data.DataLoader(train, batch_size=batch_size, shuffle=True, num_workers =1, pin_memory = True)
	test = data.DataLoader(train, batch_size=batch_size, shuffle=False, num_workers =1, pin_memory = True)











	#Defining the model and training it on loss function
	device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
	net = PixelCNN().to(device)
	if torch.cuda.device_count() > 1:
  		print("Let's use", torch.cuda.device_count(), "GPUs!")
  		net = nn.DataParallel(net)
	
	

	optimizer = optim.Adam(net.parameters())
	criterion = nn.CrossEntropyLoss()




	loss_overall = []
	time_start = time.time()
	print('Training Started')

	for i in range(epochs):

		
		net.train(True)
		step = 0
		loss_= 0

		for images, labels in train:
			
			target = Variable(images[:,0,:,:]*255).long()
			images = images.to(device)
			target = target.to(device)
			
			


			optimizer.zero_grad()

			output = net(images)
			loss = criterion(output, target)
			loss.backward()
			optimizer.step()


			loss_+=loss
			step+=1

			if(step%100 == 0):
				print('Epoch:'+str(i)+'\t'+ str(step) +'\t Iterations Complete \t'+'loss: ', loss.item()/1000.0)
				loss_overall.append(loss_/1000.0)
				loss_=0
		print('Epoch: '+str(i)+' Over!')

		#Saving the model
		if not os.path.exists(save_path):
			os.makedirs(save_path)
		print("Saving Checkpoint!")
		if(i==epochs-1):
			torch.save(net.state_dict(), save_path+'/Model_Checkpoint_'+'Last'+'.pt')
		else:
			torch.save(net.state_dict(), save_path+'/Model_Checkpoint_'+str(i)+'.pt')
		print('Checkpoint Saved')


	print('Training Finished! Time Taken: ', time.time()-time_start)
'''
